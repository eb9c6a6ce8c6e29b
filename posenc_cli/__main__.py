"""``python -m posenc_cli``: the same as the ``posenc`` command."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="posenc")
