"""StackExchange post bodies (a small HTML subset) as Markdown, with the standard library's parser.

Handles what the dumps use: paragraphs, code (inline and <pre> blocks), links, emphasis, lists,
block quotes, headings, line breaks and images (as their alt text and address). Other tags keep
their text; entities are decoded."""

from __future__ import annotations

import re
from html.parser import HTMLParser

BLOCK = {"p", "div", "ul", "ol", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table"}


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.lists: list[list] = []  # [kind, counter]
        self.pre = 0
        self.quote = 0
        self.href: list[str | None] = []

    def _block(self) -> None:
        self.out.append("\n\n")

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in BLOCK and tag != "pre":
            self._block()
        if tag == "pre":
            self.pre += 1
            self.out.append("\n\n```\n")
        elif tag == "code" and not self.pre:
            self.out.append("`")
        elif tag in {"strong", "b"}:
            self.out.append("**")
        elif tag in {"em", "i"}:
            self.out.append("*")
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self.out.append("#" * int(tag[1]) + " ")
        elif tag in {"ul", "ol"}:
            self.lists.append([tag, 0])
        elif tag == "li":
            kind = self.lists[-1] if self.lists else ["ul", 0]
            kind[1] += 1
            indent = "  " * max(0, len(self.lists) - 1)
            self.out.append(f"\n{indent}{kind[1]}. " if kind[0] == "ol" else f"\n{indent}- ")
        elif tag == "blockquote":
            self.quote += 1
        elif tag == "a":
            self.href.append(a.get("href"))
            self.out.append("[")
        elif tag == "br":
            self.out.append("  \n")
        elif tag == "hr":
            self.out.append("---")
        elif tag == "img":
            self.out.append(f"![{a.get('alt') or ''}]({a.get('src') or ''})")

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
            if self.out and not self.out[-1].endswith("\n"):
                self.out.append("\n")
            self.out.append("```\n\n")
        elif tag == "code" and not self.pre:
            self.out.append("`")
        elif tag in {"strong", "b"}:
            self.out.append("**")
        elif tag in {"em", "i"}:
            self.out.append("*")
        elif tag in {"ul", "ol"} and self.lists:
            self.lists.pop()
            self._block()
        elif tag == "blockquote":
            self.quote = max(0, self.quote - 1)
            self._block()
        elif tag == "a":
            href = self.href.pop() if self.href else None
            self.out.append(f"]({href})" if href else "]")
        elif tag in BLOCK:
            self._block()

    def handle_data(self, data):
        if self.pre:
            self.out.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self.quote:
            text = text.replace("\n", "\n> ")
            if not self.out or self.out[-1].endswith("\n"):
                text = "> " + text.lstrip()
        self.out.append(text)


def html_to_markdown(html: str) -> str:
    conv = _Converter()
    conv.feed(html)
    conv.close()
    text = "".join(conv.out)
    lines = [ln.rstrip() if not ln.endswith("  ") else ln for ln in text.split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
