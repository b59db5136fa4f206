//! The `folder` capability: a directory handle confined to one root.
//!
//! Confinement is `cap-std`'s: every path is resolved beneath the root's
//! directory handle, so `..`, absolute paths and symbolic links that lead
//! outside are refused by construction, not by string checks. This module
//! adds the rules of the contract on top: paths are relative and
//! `/`-separated, `..` is refused even where it would stay inside, a
//! read-only grant refuses every write, and file sizes are capped.
//!
//! Links: a write never goes through a link, in any component of its path,
//! and in a read-write folder neither does a read or a listing (a guest that
//! can write must not be able to reach one file under two names). The path
//! is walked one directory at a time, each opened with `O_NOFOLLOW`, so a
//! link swapped in between a check and the open fails rather than being
//! followed. A read-only folder follows links that stay inside its root.

use super::bindings::folder::{Entry, EntryKind, FolderError, Host, HostDir};
use super::view::View;
use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::Resource;

/// Largest file a guest may read or write through a folder.
pub(crate) const MAX_FILE_BYTES: u64 = 8 << 20;
/// Most entries returned by one listing.
pub(crate) const MAX_LIST_ENTRIES: usize = 10_000;

/// One granted folder.
#[derive(Debug)]
pub struct FolderCapability {
    name: String,
    root: PathBuf,
    dir: Dir,
    writable: bool,
}

impl FolderCapability {
    /// Grants the directory at `root` under `name` (e.g. `project`).
    pub fn open(
        name: impl Into<String>,
        root: &Path,
        writable: bool,
    ) -> std::io::Result<Arc<FolderCapability>> {
        let root = root.canonicalize()?;
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Arc::new(FolderCapability {
            name: name.into(),
            root,
            dir,
            writable,
        }))
    }

    /// The name the guest opens it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The canonical root on the host.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lists a directory below the root.
    pub fn list(&self, path: &str) -> Result<Vec<Entry>, FolderError> {
        let rel = relative(path, true)?;
        let entries = if self.writable {
            self.walk(&rel, false, path)?.entries()
        } else {
            self.dir.read_dir(&rel)
        };
        let mut out = Vec::new();
        for entry in entries.map_err(|e| io_error(e, path))? {
            let entry = entry.map_err(|e| io_error(e, path))?;
            if out.len() >= MAX_LIST_ENTRIES {
                break;
            }
            // The entry itself, never what a link points to.
            let kind = entry.file_type().map_err(|e| io_error(e, path))?;
            let kind = if kind.is_file() {
                EntryKind::File
            } else if kind.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::Other
            };
            let size = match kind {
                EntryKind::Other => 0,
                _ => entry.metadata().map_err(|e| io_error(e, path))?.len(),
            };
            out.push(Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                kind,
                size,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Reads a whole file below the root.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, FolderError> {
        let rel = relative(path, false)?;
        if !self.writable {
            let meta = self.dir.metadata(&rel).map_err(|e| io_error(e, path))?;
            if !meta.is_file() {
                return Err(FolderError::InvalidPath(format!("`{path}` is not a file")));
            }
            if meta.len() > MAX_FILE_BYTES {
                return Err(FolderError::TooLarge(MAX_FILE_BYTES));
            }
            return self.dir.read(&rel).map_err(|e| io_error(e, path));
        }
        let (parent, name) = split(&rel);
        let dir = self.walk(parent, false, path)?;
        refuse_link(&dir, name, path)?;
        let mut file = dir
            .open_with(
                name,
                OpenOptions::new().read(true).follow(FollowSymlinks::No),
            )
            .map_err(|e| io_error(e, path))?;
        let meta = file.metadata().map_err(|e| io_error(e, path))?;
        if !meta.is_file() {
            return Err(FolderError::InvalidPath(format!("`{path}` is not a file")));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(FolderError::TooLarge(MAX_FILE_BYTES));
        }
        let mut contents = Vec::with_capacity(meta.len() as usize);
        // One byte past the cap tells a file that grew since the check.
        (&mut file)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut contents)
            .map_err(|e| io_error(e, path))?;
        if contents.len() as u64 > MAX_FILE_BYTES {
            return Err(FolderError::TooLarge(MAX_FILE_BYTES));
        }
        Ok(contents)
    }

    /// Creates or replaces a file below the root, if the grant is writable.
    /// Missing parent directories are created; no component of the path
    /// may be a link, even one that stays inside.
    pub fn write(&self, path: &str, contents: &[u8]) -> Result<(), FolderError> {
        if !self.writable {
            return Err(FolderError::Denied(format!(
                "folder `{}` is read-only",
                self.name
            )));
        }
        let rel = relative(path, false)?;
        if contents.len() as u64 > MAX_FILE_BYTES {
            return Err(FolderError::TooLarge(MAX_FILE_BYTES));
        }
        let (parent, name) = split(&rel);
        let dir = self.walk(parent, true, path)?;
        refuse_link(&dir, name, path)?;
        let mut file = dir
            .open_with(
                name,
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .follow(FollowSymlinks::No),
            )
            .map_err(|e| io_error(e, path))?;
        file.write_all(contents).map_err(|e| io_error(e, path))
    }

    /// The directory `rel` names, reached one real directory at a time
    /// from the root and never through a link; missing ones are created
    /// when `create`.
    fn walk(&self, rel: &Path, create: bool, path: &str) -> Result<Dir, FolderError> {
        let mut dir = self.dir.try_clone().map_err(|e| io_error(e, path))?;
        for part in rel.components() {
            let Component::Normal(part) = part else {
                continue;
            };
            refuse_link(&dir, Path::new(part), path)?;
            let next = match dir.open_dir_nofollow(part) {
                Err(e) if create && e.kind() == ErrorKind::NotFound => {
                    match dir.create_dir(part) {
                        Ok(()) => {}
                        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(io_error(e, path)),
                    }
                    dir.open_dir_nofollow(part)
                }
                other => other,
            };
            dir = next.map_err(|e| io_error(e, path))?;
        }
        Ok(dir)
    }
}

/// Refuses `name` in `dir` when it is a symbolic link, naming the link.
fn refuse_link(dir: &Dir, name: &Path, path: &str) -> Result<(), FolderError> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => Err(FolderError::Denied(format!(
            "`{path}` goes through the symbolic link `{}`: a read-write folder is never used through a link",
            name.display()
        ))),
        _ => Ok(()),
    }
}

/// A checked relative path's directory and last component.
fn split(rel: &Path) -> (&Path, &Path) {
    let name = rel.file_name().map(Path::new).unwrap_or(rel);
    (rel.parent().unwrap_or(Path::new("")), name)
}

/// Checks a guest path and makes it relative. Refuses empty paths (unless
/// `root_ok`), absolute paths, backslashes, NUL and `..`.
fn relative(path: &str, root_ok: bool) -> Result<PathBuf, FolderError> {
    let invalid = |why: &str| FolderError::InvalidPath(format!("`{}`: {why}", path.escape_debug()));
    if path.contains('\0') {
        return Err(invalid("contains NUL"));
    }
    if path.contains('\\') {
        return Err(invalid("use `/` to separate"));
    }
    if path.starts_with('/') {
        return Err(invalid("absolute paths are refused"));
    }
    let mut rel = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => rel.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid("`..` is refused")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid("absolute paths are refused"));
            }
        }
    }
    if rel.as_os_str().is_empty() {
        if root_ok {
            return Ok(PathBuf::from("."));
        }
        return Err(invalid("empty"));
    }
    Ok(rel)
}

fn io_error(e: std::io::Error, path: &str) -> FolderError {
    match e.kind() {
        ErrorKind::NotFound => FolderError::NotFound(path.to_string()),
        // cap-std reports an escape (through `..` or a link) as PermissionDenied.
        ErrorKind::PermissionDenied => {
            FolderError::Denied(format!("`{path}` leads outside the folder"))
        }
        _ => FolderError::Io(e.kind().to_string()),
    }
}

/// What the `folder` interface of one call holds: the folders granted.
pub(crate) struct FolderCtx {
    pub(crate) folders: Vec<Arc<FolderCapability>>,
}

pub use super::handles::DirHandle;

impl View<'_, FolderCtx> {
    /// The granted folder `dir` names.
    fn folder(&self, dir: &Resource<DirHandle>) -> wasmtime::Result<&FolderCapability> {
        let at = self.handles.get(dir)?.folder;
        self.ctx
            .folders
            .get(at)
            .map(|f| &**f)
            .ok_or_else(|| wasmtime::Error::msg("a folder handle names no granted folder"))
    }
}

impl Host for View<'_, FolderCtx> {
    fn open(&mut self, name: String) -> wasmtime::Result<Result<Resource<DirHandle>, FolderError>> {
        let Some(folder) = self.ctx.folders.iter().position(|f| f.name() == name) else {
            return Ok(Err(FolderError::Denied(
                "this session holds no folder by that name".to_string(),
            )));
        };
        match self.handles.push(DirHandle { folder })? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(FolderError::Denied(format!(
                "at most {} handles per call",
                super::view::MAX_HANDLES
            )))),
        }
    }
}

impl HostDir for View<'_, FolderCtx> {
    fn entries(
        &mut self,
        dir: Resource<DirHandle>,
        path: String,
    ) -> wasmtime::Result<Result<Vec<Entry>, FolderError>> {
        Ok(self.folder(&dir)?.list(&path))
    }

    fn read(
        &mut self,
        dir: Resource<DirHandle>,
        path: String,
    ) -> wasmtime::Result<Result<Vec<u8>, FolderError>> {
        Ok(self.folder(&dir)?.read(&path))
    }

    fn write(
        &mut self,
        dir: Resource<DirHandle>,
        path: String,
        contents: Vec<u8>,
    ) -> wasmtime::Result<Result<(), FolderError>> {
        Ok(self.folder(&dir)?.write(&path, &contents))
    }

    fn writable(&mut self, dir: Resource<DirHandle>) -> wasmtime::Result<bool> {
        Ok(self.folder(&dir)?.writable)
    }

    fn drop(&mut self, dir: Resource<DirHandle>) -> wasmtime::Result<()> {
        self.handles.drop(dir)?;
        Ok(())
    }
}
