"""JavaScript rendering: which pages need a browser (:mod:`.detect`), which hosts are rendered
directly (:mod:`.hosts`), the decision as a downloader middleware (:mod:`.middleware`) and the
browser itself, polite and on a budget (:mod:`.handler`)."""
