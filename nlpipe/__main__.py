"""`python -m nlpipe ...` is the same as the `nlpipe` command."""
from .cli import main

main()
