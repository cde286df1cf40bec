"""A loopback web whose pages change as Poisson processes with known rates, in accelerated
time, for measuring a recrawler's freshness against ground truth.

    from webs.changeweb import ChangeConfig, ChangeWeb, Truth, version_in_text
"""
from .model import ChangeConfig, ChangeWeb, version_in_text
from .truth import Truth

__all__ = ["ChangeConfig", "ChangeWeb", "Truth", "version_in_text"]
