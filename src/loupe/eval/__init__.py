"""The evaluation instrument (E1–E9): query sets with provenance, runs
through the production search path (read-only), metrics with intervals,
pooled blind judging and the leak check. See docs/evaluation.md."""

from .instrument import EvalError, Evaluation, RunResult, readonly_connection
from .queryset import Query, QuerySetError

__all__ = ["EvalError", "Evaluation", "Query", "QuerySetError", "RunResult",
           "readonly_connection"]
