"""``python -m posenc_cli``: the same as the ``posenc`` command."""

from ._entry import main

if __name__ == "__main__":
    main()
