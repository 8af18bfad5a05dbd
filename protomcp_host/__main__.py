from protomcp_host.cli.main import main

main()
