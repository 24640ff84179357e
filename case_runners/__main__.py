from case_runners.cli.main import main

raise SystemExit(main())
