"""The filter grammar and the one SQL predicate it compiles to (both arms apply it)."""
