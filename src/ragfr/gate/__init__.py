"""The evidence gate: whether a search's passages may be answered from, in `ragfr ask` and in the chat.

One module per part, imported by these names:
  rank      the rank rule (RRF / cross-encoder thresholds) and THE decision both surfaces take (`decide`)
  features  the search's evidence features, computed by ragfr.retrieval during every search
  fitted    the fitted decision over the features (coefficients per embedding model: models/ or an operator's
            RAGFR_GATE_CALIBRATION)
  fitting   the fit (`ragfr gate calibrate` and ragfr_tools.eval.gate_fit)
  subject   the subject rule: a question's subject no searched document names (the Absence the search finds,
            `rank.with_subject` applies), and how it travels as JSON

It sits below ragfr.retrieval (which computes the features), so it never imports it.
"""
