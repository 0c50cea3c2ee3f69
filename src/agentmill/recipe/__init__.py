"""Recipes: a TOML file of stages, planned, cached and run in order (see stage.py for the interface).

The stage registry (stage.py) imports no stage; this package face imports the bundled stages, so any
import of the recipe package registers them before a recipe is validated or planned.
"""

from agentmill.recipe import stages  # noqa: F401  (registers the bundled stages)
