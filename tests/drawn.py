"""The values the fuzzer's config strategy draws for a lowering knob, for tests that check
the fuzzer (and so every config the tuner may pick) reaches each of them."""

from __future__ import annotations


def drawn(knob: str, examples: int) -> set:
    """Every value of `knob` among `examples` derandomised draws of
    `fuzz.strategies.lowering_configs()`."""
    from hypothesis import given, settings

    from fuzz.strategies import lowering_configs

    seen = set()

    @settings(max_examples=examples, database=None, derandomize=True)
    @given(lowering_configs())
    def draw(cfg):
        seen.add(getattr(cfg, knob))

    draw()
    return seen
