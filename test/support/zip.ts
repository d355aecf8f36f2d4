/**
 * ZIP files written by hand (PKWARE APPNOTE 4.3: local headers, the central directory, its end record),
 * for the archives the scanner must refuse: the `zip` command is not on every test machine, and a zip
 * bomb is best made from bytes one controls.
 */
import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  /** The entry's bytes as stored (deflated when `size` is larger). */
  data: Buffer;
  /** The unpacked size; with method 8 the stored bytes are its deflated form. */
  size: number;
  crc: number;
  /** 0 stored, 8 deflated. */
  method: 0 | 8;
}

/** A ZIP holding the entries in order. */
export function zipFile(entries: ZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const directory: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(entry.method, 8);
    local.writeUInt32LE(entry.crc >>> 0, 14);
    local.writeUInt32LE(entry.data.length, 18);
    local.writeUInt32LE(entry.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(entry.method, 10);
    central.writeUInt32LE(entry.crc >>> 0, 16);
    central.writeUInt32LE(entry.data.length, 20);
    central.writeUInt32LE(entry.size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    parts.push(local, name, entry.data);
    directory.push(central, name);
    offset += local.length + name.length + entry.data.length;
  }
  const centralDirectory = Buffer.concat(directory);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralDirectory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, centralDirectory, end]);
}

/**
 * A zip bomb: `entries` files of `entrySize` zero bytes each, deflated (about 1000:1), so a few hundred
 * KB unpack to entries × entrySize.
 */
export function zipBomb(entries: number, entrySize: number): Buffer {
  const zeros = Buffer.alloc(entrySize);
  const entry = { data: deflateRawSync(zeros), size: entrySize, crc: crc32(zeros), method: 8 as const };
  return zipFile(Array.from({ length: entries }, (_, i) => ({ ...entry, name: `part-${i + 1}.bin` })));
}

/** A ZIP in a ZIP in a ZIP ..., `depth` levels around one small text file. */
export function nestedZip(depth: number): Buffer {
  let inner: Buffer = Buffer.from('the innermost file\n');
  for (let level = depth; level >= 1; level--) {
    inner = zipFile([
      {
        name: level === depth ? 'file.txt' : `level-${level + 1}.zip`,
        data: inner,
        size: inner.length,
        crc: crc32(inner),
        method: 0,
      },
    ]);
  }
  return inner;
}
