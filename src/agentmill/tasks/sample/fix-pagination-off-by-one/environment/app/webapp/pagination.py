"""Pagination helper for the list endpoints."""


def paginate(items, page, per_page=10):
    """Return one page of ``items`` as a dict.

    Pages are numbered from 1: page 1 holds items[0:per_page], page 2 the next
    ``per_page`` items, and so on. The last page may be only partly filled.

    Keys of the result:
      items        -- the items on this page (empty list if the page is past the end)
      page         -- the requested page number
      per_page     -- the page size
      total_items  -- len(items)
      total_pages  -- number of pages needed to show every item (0 if there are no items)
      has_prev     -- True if page > 1
      has_next     -- True if there is a page after this one

    Raises ValueError if page < 1 or per_page < 1.
    """
    if page < 1 or per_page < 1:
        raise ValueError("page and per_page must be >= 1")
    total_pages = len(items) // per_page
    start = page * per_page
    end = start + per_page
    return {
        "items": list(items[start:end]),
        "page": page,
        "per_page": per_page,
        "total_items": len(items),
        "total_pages": total_pages,
        "has_prev": page > 1,
        "has_next": page < total_pages,
    }
