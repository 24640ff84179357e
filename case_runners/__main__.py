from case_runners.cli import main

raise SystemExit(main())
