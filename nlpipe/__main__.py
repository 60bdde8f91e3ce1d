"""`python -m nlpipe ...` is the same as the `nlpipe` command."""
from nlpipe.cli import main

main()
