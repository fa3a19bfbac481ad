from amtuner.cli import main

raise SystemExit(main())
