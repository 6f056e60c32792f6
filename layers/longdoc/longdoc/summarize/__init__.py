"""Whole-document summaries: map-reduce over section groups, every statement cited, exact values verbatim.

A document that fits one call is summarised in one (streamed) call; a longer one is cut into
groups of whole sections (about 1,500-3,000 tokens, each section under a
``[doc: ... | section: 3.2 | page: 14]`` header), each group is summarised in parallel (map),
the partial summaries are synthesised in levels (reduce) and the final synthesis is streamed.
Every statement is checked against the cited sections' own text before it is stored.
"""
