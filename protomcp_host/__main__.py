from protomcp_host.cli.entry import main

main()
