"""A rendering handler whose browser is slow to open a page, as a just-launched Chromium on a busy
machine is (over 5 s seen): set as DOWNLOAD_HANDLERS by tests/test_render_crawl.py, its delay in
the environment (a crawl refuses settings it does not know)."""

import asyncio
import os

from crawlproj.rendering.handler import RenderingDownloadHandler


class SlowToOpenPages(RenderingDownloadHandler):
    """Each new page opens ``$TEST_PAGE_OPEN_DELAY`` seconds late."""

    async def _create_page(self, request, spider):
        await asyncio.sleep(float(os.environ["TEST_PAGE_OPEN_DELAY"]))
        return await super()._create_page(request, spider)
