"""Bulk actions on a whole result set (C6)."""

from .actions import ACTIONS, BulkError, ConfirmationRequired, apply_action

__all__ = ["ACTIONS", "BulkError", "ConfirmationRequired", "apply_action"]
