# scrapyd-deploy builds its egg by running this file (setup.py bdist_uberegg); every
# piece of metadata lives in pyproject.toml.
from setuptools import setup

setup()
