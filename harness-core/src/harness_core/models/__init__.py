"""Models the loop can drive: the interface, the strict scripted model, OpenAI-compatible APIs.

`openai` is imported only when an OpenAI-compatible model is built (startup time).
"""

from ._base import (
    ContextLengthExceeded,
    DeltaSink,
    Model,
    ModelBase,
    ModelError,
    ModelResponse,
    ResponseToolCall,
    Thinking,
)
from ._retry import (
    ERROR_WIDTH,
    Endpoint,
    RetryPolicy,
    error_cause,
    read_timeout,
    retry_after,
    retryable,
    status_message,
    transport_message,
)
from .scripted import ScriptedModel, ScriptError

__all__ = [
    "ERROR_WIDTH",
    "ContextLengthExceeded",
    "DeltaSink",
    "Endpoint",
    "Model",
    "ModelBase",
    "ModelError",
    "ModelResponse",
    "ResponseToolCall",
    "RetryPolicy",
    "ScriptError",
    "ScriptedModel",
    "Thinking",
    "error_cause",
    "read_timeout",
    "retry_after",
    "retryable",
    "status_message",
    "transport_message",
]
