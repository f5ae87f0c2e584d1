import sys

from aiorocketmq.client.admin.cli import main

sys.exit(main())
