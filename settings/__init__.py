"""crawlproj's settings (Scrapy's ``SETTINGS_MODULE``, named in ``scrapy.cfg``).

The base is every setting's default, each declared once in ``crawlproj/project_defaults.py``
(this project's spiders, commands and profiles) and ``crawlproj/defaults.py`` (the components'),
and listed in ``docs/settings.md``. A profile in this folder (``local``, the default;
``sandbox``, ``distributed``, ``incremental``) is applied over it with
``-s PROFILE=<name>``; ``-s`` options still win over the profile. A new ``<name>.py``
here is a new profile.
"""

from crawlproj.defaults import *  # noqa: F401,F403 - the components' settings and their defaults
from crawlproj.project_defaults import *  # noqa: F401,F403 - this project's spiders, commands and profiles
