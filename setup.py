# scrapyd-deploy builds its egg by running this file (setup.py bdist_egg); every other piece of
# metadata lives in pyproject.toml. The wheel and the sdist hold the crawlproj package alone,
# for any Scrapy project: no top-level `settings` or `seeds` to collide with another project's
# (nor sandbox/: the test web is no part of the deployed crawler). The egg is this project,
# deployed: it carries the top-level settings/ (its profiles) and seeds/, and tells Scrapyd
# where its settings are.
import sys

from setuptools import find_packages, setup

if {"bdist_egg", "bdist_uberegg"} & set(sys.argv[1:]):
    setup(packages=find_packages(include=["crawlproj*", "settings", "seeds"]),
          package_data={"seeds": ["*.txt"]},  # the egg Scrapyd runs has no checkout around it
          entry_points={"scrapy": ["settings = settings"]})  # how Scrapyd finds the settings
else:  # (no entry point: the wheel's Scrapy project is the user's)
    setup(packages=find_packages(include=["crawlproj*"]), entry_points={"console_scripts": []})
