//! The watch cache saved on local disk when the shard stops, so that a restart on etcd reads its own
//! copy instead of every object from etcd (etcd spends about 13 µs of CPU per object on a full read:
//! over 10 s for 100,000 workspaces), then watches only what changed after it.
//!
//! A snapshot is read at most once (it is removed as it is opened) and used only when it continues
//! the store's history: the store has the same identity, it is not behind the snapshot, and the
//! newest object of the snapshot is in the store at the snapshot's revision with the same mod
//! revision. Otherwise, or when watching after it fails (history compacted), the cache reads the
//! store whole, as without a snapshot.
//!
//! Layout: a header (magic, format, identity, revision, newest key and its mod revision, entry
//! count), then per object its key, mod revision and JSON as served, lengths as little-endian u32.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kcp_store::{KeyValue, Revision};

use crate::watch_cache::CachedObject;

const MAGIC: &[u8; 16] = b"kcp-rs snapshot\n";
const FORMAT: u32 = 1;
/// Longer keys or values mean a damaged file, not an object.
const MAX_FIELD: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub identity: String,
    /// The store revision the snapshot shows.
    pub revision: Revision,
    /// The object written last, and at which revision.
    pub newest: Option<(String, Revision)>,
    pub objects: u64,
}

/// Writes `objects` (the cache's whole content at `revision`) to `path`, through a temporary file
/// renamed into place, so a crash never leaves a partial snapshot under the real name.
pub fn write(
    path: &Path,
    identity: &str,
    revision: Revision,
    objects: &[Arc<CachedObject>],
) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let newest = objects.iter().max_by_key(|o| o.revision);
    out.write_all(MAGIC)?;
    out.write_all(&FORMAT.to_le_bytes())?;
    put_bytes(&mut out, identity.as_bytes())?;
    out.write_all(&revision.to_le_bytes())?;
    put_bytes(&mut out, newest.map_or("", |o| o.key.as_str()).as_bytes())?;
    out.write_all(&newest.map_or(0, |o| o.revision).to_le_bytes())?;
    out.write_all(&(objects.len() as u64).to_le_bytes())?;
    let mut json = Vec::new();
    for obj in objects {
        put_bytes(&mut out, obj.key.as_bytes())?;
        out.write_all(&obj.revision.to_le_bytes())?;
        json.clear();
        obj.json.write_to(&mut json);
        put_bytes(&mut out, &json)?;
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn put_bytes(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| invalid("field longer than 4 GiB"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("cache snapshot: {what}"),
    )
}

/// Reads a snapshot's objects a page at a time.
pub struct Reader {
    input: BufReader<File>,
    left: u64,
}

/// Opens the snapshot at `path` and removes it from the directory (it is read at most once; a
/// stale one would otherwise be tried again after every crash). None when there is none.
pub fn take(path: &Path) -> io::Result<Option<(Header, Reader)>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    std::fs::remove_file(path)?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut magic = [0u8; 16];
    input.read_exact(&mut magic)?;
    if &magic != MAGIC || u32::from_le_bytes(array(&mut input)?) != FORMAT {
        return Err(invalid("not a snapshot of this format"));
    }
    let identity = string(get_bytes(&mut input)?)?;
    let revision = Revision::from_le_bytes(array(&mut input)?);
    let newest_key = string(get_bytes(&mut input)?)?;
    let newest_revision = Revision::from_le_bytes(array(&mut input)?);
    let objects = u64::from_le_bytes(array(&mut input)?);
    let header = Header {
        identity,
        revision,
        newest: (!newest_key.is_empty()).then_some((newest_key, newest_revision)),
        objects,
    };
    Ok(Some((
        header,
        Reader {
            input,
            left: objects,
        },
    )))
}

impl Reader {
    /// Up to `n` more objects; empty at the end. A short file is an error.
    pub fn page(&mut self, n: usize) -> io::Result<Vec<KeyValue>> {
        let count = self.left.min(n as u64);
        let mut page = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let key = string(get_bytes(&mut self.input)?)?;
            let mod_revision = Revision::from_le_bytes(array(&mut self.input)?);
            let value = Bytes::from(get_bytes(&mut self.input)?);
            page.push(KeyValue {
                key,
                value,
                create_revision: 0,
                mod_revision,
            });
        }
        self.left -= count;
        Ok(page)
    }
}

fn array<const N: usize>(input: &mut impl Read) -> io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    input.read_exact(&mut buf)?;
    Ok(buf)
}

fn get_bytes(input: &mut impl Read) -> io::Result<Vec<u8>> {
    let len = u32::from_le_bytes(array(input)?) as usize;
    if len > MAX_FIELD {
        return Err(invalid("field too long"));
    }
    let mut buf = vec![0u8; len];
    input.read_exact(&mut buf)?;
    Ok(buf)
}

fn string(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|_| invalid("key is not UTF-8"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::object_json::ObjectJson;

    fn object(key: &str, revision: Revision) -> Arc<CachedObject> {
        let json = format!(r#"{{"metadata":{{"name":"n","resourceVersion":"{revision}"}}}}"#);
        Arc::new(CachedObject {
            key: key.into(),
            cluster: crate::testing::lc("c").clone(),
            namespace: None,
            name: "n".into(),
            revision,
            labels: Default::default(),
            json: ObjectJson::from(json.into_bytes()),
        })
    }

    #[test]
    fn round_trip_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.snapshot");
        let objects: Vec<_> = (1..=5)
            .map(|i| object(&format!("/k/{i}"), i * 10))
            .collect();
        write(&path, "etcd x", 77, &objects).unwrap();
        let (header, mut reader) = take(&path).unwrap().unwrap();
        assert_eq!(
            header,
            Header {
                identity: "etcd x".into(),
                revision: 77,
                newest: Some(("/k/5".into(), 50)),
                objects: 5,
            }
        );
        assert!(!path.exists(), "a snapshot is removed once opened");
        let first = reader.page(3).unwrap();
        assert_eq!(first.len(), 3);
        assert_eq!(first[1].key, "/k/2");
        assert_eq!(first[1].mod_revision, 20);
        assert_eq!(
            &first[1].value[..],
            br#"{"metadata":{"name":"n","resourceVersion":"20"}}"#
        );
        assert_eq!(reader.page(3).unwrap().len(), 2);
        assert!(reader.page(3).unwrap().is_empty());
        assert!(take(&path).unwrap().is_none());
    }

    #[test]
    fn damage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.snapshot");
        let objects: Vec<_> = (1..=3).map(|i| object(&format!("/k/{i}"), i)).collect();
        write(&path, "etcd x", 3, &objects).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // Cut short: the last page fails.
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let (_, mut reader) = take(&path).unwrap().unwrap();
        assert!(reader.page(10).is_err());
        // Not a snapshot at all.
        std::fs::write(&path, b"something else entirely").unwrap();
        assert!(take(&path).is_err());
    }
}
