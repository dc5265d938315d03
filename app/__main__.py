import sys

from app.progress import show_start

# A long command's bar before anything heavy is imported (app.cli takes a second on a busy machine).
show_start(sys.argv[1:])

from app.cli import main  # noqa: E402

sys.exit(main())
