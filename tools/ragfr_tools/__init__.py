"""Repository tools of ragfr: benchmarks, build helpers, the Ollama-API test double, calibration and
comparison drivers. They need a checkout (its scripts, images and ../shared datasets) and never ship: the
product is `src/ragfr`, and nothing there imports this package."""
