"""``ctxwin bench``: run named strategy chains over a user's conversations at several budgets and compare them.

``chains`` names the chains, ``budgets`` parses budgets like ``4k``, ``metrics`` says what one fitted conversation
kept of its original, ``run`` times the plans and aggregates the metrics, ``plot`` draws the chart (matplotlib,
imported only when a chart is asked for). This package sits at the CLI layer: it uses the planner and the
strategies, and nothing below it imports it.
"""
