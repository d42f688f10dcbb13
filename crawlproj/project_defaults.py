"""The settings of crawlproj's own Scrapy project (``settings/`` beside ``scrapy.cfg``), declared
as :mod:`crawlproj.defaults` declares the components' (``NAME: check = default`` under ``#:``).

Kept apart from the components' defaults: they name this repository's spiders, commands and
profiles, which another Scrapy project has none of. A project that imports
:mod:`crawlproj.defaults` (or enables the add-on, :class:`crawlproj.addon.Crawlproj`) gets the
crawler's components and their defaults, and keeps its own spiders, commands and add-ons.
"""

# Not ``from __future__ import annotations``: each annotation is the check object itself.
from crawlproj.checks import components, non_empty, string_list, text

#: Scrapy's project name; also the product token of crawlproj's default User-Agent.
BOT_NAME: non_empty = "crawlproj"
#: Where Scrapy finds the spiders (web, site).
SPIDER_MODULES: string_list = ["crawlproj.spiders"]
#: Where `scrapy genspider` puts a new spider.
NEWSPIDER_MODULE: text = "crawlproj.spiders"
#: crawlproj's commands (crawl's input checks, demo, report, merge, ...).
COMMANDS_MODULE: text = "crawlproj.commands"
#: Applies PROFILE and checks every setting before the crawl starts; gives every feed (FEEDS)
#: crawlproj's page filter: stored pages only, one record each.
ADDONS: components = {"crawlproj.profiles.ProfileAddon": 0, "crawlproj.exports.feeds.PageFeeds": 10}

#: Which profile of the project's settings/ to apply (local, sandbox, distributed, incremental, archive).
PROFILE: text = "local"
