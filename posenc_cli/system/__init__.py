"""What posenc asks of the machine it runs on, in one place: nothing here knows a table, a kind or a format.

- :mod:`~posenc_cli.system.atomic`: every output appears whole or not at all (a temporary file renamed into
  place), only regular files are replaced, and ``--check`` compares what would be written with what is there;
- :mod:`~posenc_cli.system.signals`: SIGTERM and SIGHUP unwind like Ctrl-C, so the same cleanup runs;
- :mod:`~posenc_cli.system.capacity`: the memory this process can still allocate and the free space where a file
  goes, each checked before the work that needs it;
- :mod:`~posenc_cli.system.files`: a file posenc reads is opened only if it is a regular file.

The layers above lean on it (the formats for the memory a read may take, the API and the CLI for outputs and
signals); it leans on nothing of posenc but :mod:`posenc_cli.errors`, so any layer may use it without a circle.
"""
