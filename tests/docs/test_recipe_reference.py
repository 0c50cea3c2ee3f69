"""docs/recipes.md's recipe reference is what the schema says now: every section, every key, its
type, default and meaning (regenerate: python -m agentmill.recipe.reference docs/recipes.md)."""

from pydantic import BaseModel

from agentmill.recipe import reference
from agentmill.recipe.schema import Recipe
from tests.docs.doc_blocks import ROOT


class Bare(BaseModel):
    said: int = 1  # a comment is a meaning
    unsaid: int = 2


def test_docs_recipes_holds_the_current_reference():
    page = (ROOT / "docs" / "recipes.md").read_text()
    assert reference.render() in page, "docs/recipes.md is stale: python -m agentmill.recipe.reference docs/recipes.md"


def test_every_section_of_the_recipe_is_in_the_reference():
    shown = {cls for _, cls, _ in reference.SECTIONS}
    for name, field in Recipe.model_fields.items():
        if not field.exclude:
            assert reference._model_in(field.annotation) in shown, name


def test_every_key_has_a_meaning_and_a_new_bare_key_would_not():
    for _, cls, _ in reference.SECTIONS:
        for name, field in cls.model_fields.items():
            assert field.exclude or reference.meaning(cls, name), f"{cls.__name__}.{name} has no meaning"
    assert reference.meaning(Bare, "said") == "a comment is a meaning" and reference.meaning(Bare, "unsaid") == ""
