"""Words that carry no content for matching text against text (a seed against a file's text, a
rubric criterion against the instruction): one list, so the two matches agree on what a word is."""

FUNCTION_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "such",
        "other",
        "into",
        "their",
        "them",
        "they",
        "have",
        "been",
        "when",
        "which",
        "about",
        "through",
        "using",
        "used",
        "these",
        "those",
        "also",
        "each",
        "more",
    }
)
