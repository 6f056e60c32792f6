"""Extract pipeline: runs, the session loop, the tool harness, prompt, citations and retrieval."""
