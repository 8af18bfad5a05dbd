from protomcp_host.cli import main

main()
