"""The recipe's stages: sources, augment, mix, rollout, trace filters, export (task filters: ../task_filters)."""
