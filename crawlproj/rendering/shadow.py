"""A rendered page's DOM with its shadow roots in it (the script run in the page, as a string).

Web components keep their text and links in shadow roots, which a page's serialised HTML
(Playwright's ``page.content()``, the DOM's ``outerHTML``) leaves out: of an API reference
built with RapiDoc, whose 55 components showed 11,000 characters, 7 were stored.
:data:`FLATTEN_SHADOW_ROOTS` serialises the document as a reader sees it instead: each open
shadow root's content in place of its host's children, each ``<slot>`` filled with the nodes
assigned to it. It returns None when the page has no shadow root (its ``content()`` is the
same), so an ordinary page costs one ``querySelectorAll``.
"""

FLATTEN_SHADOW_ROOTS = r"""() => {
  const hosts = [];
  const find = root => root.querySelectorAll('*').forEach(el => {
    if (el.shadowRoot) { hosts.push(el); find(el.shadowRoot); }
  });
  find(document);
  if (!hosts.length) return null;
  const text = s => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const quoted = s => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source',
                        'track', 'wbr']);
  const children = node => Array.from(node.childNodes).map(serialise).join('');
  const serialise = node => {
    if (node.nodeType === Node.TEXT_NODE) return text(node.data);
    if (node.nodeType === Node.DOCUMENT_FRAGMENT_NODE) return children(node);
    if (node.nodeType !== Node.ELEMENT_NODE) return '';
    const tag = node.localName;
    if (tag === 'slot') {
      const given = node.assignedNodes({flatten: true});
      return given.length ? given.map(serialise).join('') : children(node);
    }
    let open = '<' + tag;
    for (const a of node.attributes) open += ' ' + a.name + '="' + quoted(a.value) + '"';
    open += '>';
    if (VOID.has(tag)) return open;
    if (tag === 'script' || tag === 'style') return open + node.textContent + '</' + tag + '>';
    return open + children(node.shadowRoot || node) + '</' + tag + '>';
  };
  return '<!DOCTYPE html>' + serialise(document.documentElement);
}"""


#: What a reader sees, read in the browser (for tests and benchmarks: the truth a render's stored
#: text is held to): ``[all visible text, the same without navigation]``, walking the composed
#: tree (shadow roots and slots), leaving out what is not displayed. Its argument: the selector of
#: navigation (:data:`crawlproj.content.main_text.NAVIGATION`).
READER_TEXT = r"""(NAVIGATION) => {
  const walk = (node, skip) => {
    if (node.nodeType === Node.TEXT_NODE) return node.data;
    if (node.nodeType === Node.ELEMENT_NODE) {
      const tag = node.localName;
      if (['script', 'style', 'noscript', 'template'].includes(tag) || (skip && node.matches(NAVIGATION))) return '';
      const style = getComputedStyle(node);
      if (style.display === 'none' || style.visibility === 'hidden') return '';
      if (node.shadowRoot) return walk(node.shadowRoot, skip);
      if (tag === 'slot') return node.assignedNodes({flatten: true}).map(n => walk(n, skip)).join(' ');
    } else if (node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return '';
    return Array.from(node.childNodes).map(n => walk(n, skip)).join(' ');
  };
  return [walk(document.body, false), walk(document.body, true)];
}"""
