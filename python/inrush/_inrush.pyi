"""The Rust extension (crates/inrush-python); use the functions of ``inrush`` instead."""

from typing import Any, Callable, List, Optional

__version__: str

def main(argv: List[str]) -> int: ...
def load(
    argv: List[str],
    stream: Optional[Any] = None,
    name: str = "DataFrame",
    progress: Optional[Callable[[Optional[str], int, int, Optional[int]], None]] = None,
) -> str: ...
def plan(argv: List[str]) -> str: ...
