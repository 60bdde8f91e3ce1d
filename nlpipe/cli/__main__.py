from nlpipe.cli import main

main()
