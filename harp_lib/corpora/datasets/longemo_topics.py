"""LongEmo topic phrases (pluggable): the deterministic default :class:`KeywordTopics`, the
paper's :class:`QwenTopics` (:data:`PAPER_TOPIC_MODEL`) and :func:`make_topic_generator`."""
from __future__ import annotations

from collections import Counter
from typing import Callable, Union

from harp_lib.corpora.datasets.common import STOPWORDS, words

__all__ = ["KeywordTopics", "QwenTopics", "make_topic_generator", "PAPER_TOPIC_MODEL"]

#: The paper's topic-phrase model (greedy, 20 new tokens, <= 200 characters of context).
PAPER_TOPIC_MODEL = "Qwen/Qwen3.5-0.8B"


class KeywordTopics:
    """Deterministic topic phrase: the 3 most frequent content words of the context.

    >>> KeywordTopics()("the garden and the garden tools, roses in the garden need roses")
    'garden, roses and tools'
    """
    name = "keywords"

    def __init__(self, n_words: int = 3):
        self.n_words = n_words

    def __call__(self, context: str) -> str:
        toks = [w.strip("'-") for w in words(context)]
        toks = [w for w in toks if len(w) >= 3 and w not in STOPWORDS]
        if not toks:
            return "this topic"
        first = {w: i for i, w in reversed(list(enumerate(toks)))}
        top = sorted(Counter(toks).items(), key=lambda kv: (-kv[1], first[kv[0]]))[: self.n_words]
        ws = [w for w, _ in top]
        return ws[0] if len(ws) == 1 else ", ".join(ws[:-1]) + " and " + ws[-1]


class QwenTopics:
    """The paper's topic step: ``Qwen/Qwen3.5-0.8B``, greedy, 20 new tokens (local weights only)."""
    name = "qwen"

    def __init__(self, model_id: str = PAPER_TOPIC_MODEL, max_new_tokens: int = 20):
        from transformers import pipeline  # heavy: transformers (torch), the paper path; HF_HUB_OFFLINE=1 keeps it offline
        self.model_id = model_id
        self.pipe = pipeline("text-generation", model=model_id, max_new_tokens=max_new_tokens,
                             do_sample=False)

    def __call__(self, context: str) -> str:
        msgs = [{"role": "system", "content": "Give a topic phrase (3-7 words) for what is being "
                 "discussed. Output only the phrase, nothing else."}, {"role": "user", "content": context}]
        prompt = self.pipe.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                         enable_thinking=False)
        out = self.pipe(prompt, return_full_text=False)[0]["generated_text"]
        line = out.strip().strip("\"'.,: ").split("\n")[0].strip()
        return " ".join(line.split()[:7]) or "this topic"


def make_topic_generator(spec: Union[str, Callable[[str], str]]) -> Callable[[str], str]:
    """``"keywords"`` (default), ``"qwen"`` (paper) or any callable ``context -> phrase``."""
    if callable(spec):
        return spec
    if spec == "keywords":
        return KeywordTopics()
    if spec == "qwen":
        return QwenTopics()
    raise ValueError(f"unknown topic generator {spec!r}; use 'keywords', 'qwen' or a callable")
