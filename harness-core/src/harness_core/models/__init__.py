"""Models the loop can drive: the interface, the strict scripted model, OpenAI-compatible APIs,
and the retry driver every provider shares.

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
    BrokenStream,
    Endpoint,
    Failure,
    GarbledStream,
    ProviderModel,
    RetryPolicy,
    read_timeout,
    status_failure,
    stream_failure,
    with_retries,
)
from .scripted import ScriptedModel, ScriptError

__all__ = [
    "ERROR_WIDTH",
    "BrokenStream",
    "ContextLengthExceeded",
    "DeltaSink",
    "Endpoint",
    "Failure",
    "GarbledStream",
    "Model",
    "ModelBase",
    "ModelError",
    "ModelResponse",
    "ProviderModel",
    "ResponseToolCall",
    "RetryPolicy",
    "ScriptError",
    "ScriptedModel",
    "Thinking",
    "read_timeout",
    "status_failure",
    "stream_failure",
    "with_retries",
]
