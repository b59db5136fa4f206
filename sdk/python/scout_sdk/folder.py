"""The `folder` handle (`scout:connector/folder@0.2.0`): a directory the host
granted under a name, its `folder-error`s raised as tool errors. Only a world
that includes `with-folder` has it."""

from componentize_py_types import Err
from wit_world.imports import types

from . import errors

try:
    from wit_world.imports import folder as _folder
except ImportError:  # the world does not include scout:connector/with-folder
    _folder = None


def folder_error(error):
    """The tool error (an `Err` to raise) for a `folder-error`."""
    value = error.value if isinstance(error, Err) else error
    kinds = {
        "FolderError_Denied": "denied",
        "FolderError_NotFound": "not-found",
        "FolderError_InvalidPath": "invalid-path",
        "FolderError_TooLarge": "too-large",
        "FolderError_Io": "io",
    }
    kind = kinds.get(type(value).__name__, "unknown")
    if kind == "too-large":
        return errors.capability(types.Capability.FOLDER, kind, f"larger than {value.value} bytes", value.value)
    return errors.capability(types.Capability.FOLDER, kind, getattr(value, "value", repr(value)))


class Folder:
    """A granted directory; paths are relative to its root, `/`-separated."""

    def __init__(self, handle):
        self._dir = handle

    def _call(self, f, *a):
        try:
            return f(*a)
        except Err as e:
            raise folder_error(e) from None

    def entries(self, path=""):
        """Lists a directory (`""` is the root): entries with `name`, `kind`, `size`."""
        return self._call(self._dir.entries, path)

    def read(self, path):
        """Reads a whole file as bytes."""
        return bytes(self._call(self._dir.read, path))

    def read_text(self, path):
        """Reads a whole file as UTF-8 text."""
        return self.read(path).decode("utf-8", errors="replace")

    def write(self, path, contents):
        """Creates or replaces a file (bytes or text) and its parent directories."""
        data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
        self._call(self._dir.write, path, data)

    def writable(self):
        """Whether this handle may write."""
        return self._dir.writable()


def open(name):
    """The folder the host granted under `name` (e.g. `project`); `denied`
    when the session holds none by that name."""
    if _folder is None:
        raise errors.refused(
            "this connector's world does not include scout:connector/with-folder@0.2.0, so it has no folder"
        )
    try:
        return Folder(_folder.open(name))
    except Err as e:
        raise folder_error(e) from None
