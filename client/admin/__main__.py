import sys

from client.admin.cli import main

sys.exit(main())
