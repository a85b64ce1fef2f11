// A deterministic zip writer for the Windows archive: entries in the order given (the caller sorts
// them), every timestamp the same (SOURCE_DATE_EPOCH, written as UTC), no extra fields (no uid/gid
// or extended timestamps), Unix modes in the external attributes, deflate at level 6 (gzip's default: level 9 took three times as long for 1 % less). Info-ZIP's
// `zip -X` gets close but writes local time (the machine's time zone) and needs another package.
// No zip64: the writer refuses an archive that would need it (4 GiB, 65,535 entries).
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { crc32, deflateRawSync } from 'node:zlib';

/** DOS date and time (2-second steps, years from 1980) of a Unix time in seconds, in UTC. */
export function dosDateTime(epochSeconds) {
  const d = new Date(Math.max(epochSeconds, 315532800) * 1000); // 1980-01-01: the format's first day
  const time = (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | Math.floor(d.getUTCSeconds() / 2);
  const date = ((d.getUTCFullYear() - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate();
  return { time, date };
}

/**
 * Writes `out` from entries `{ name, mode, file? }`: a name ending in `/` is a directory, any other
 * entry takes the bytes of `file` (a path) or `data` (a Buffer).
 */
export function writeZip(out, entries, epochSeconds) {
  if (entries.length > 0xffff) throw new Error(`${entries.length} entries need zip64, which this writer does not write`);
  const { time, date } = dosDateTime(epochSeconds);
  const fd = openSync(out, 'w');
  let offset = 0;
  const write = (buffer) => {
    writeSync(fd, buffer);
    offset += buffer.length;
  };
  const central = [];
  try {
    for (const entry of entries) {
      const name = Buffer.from(entry.name, 'utf8');
      const isDir = entry.name.endsWith('/');
      const raw = isDir ? Buffer.alloc(0) : (entry.data ?? readFileSync(entry.file));
      const deflated = raw.length > 0 ? deflateRawSync(raw, { level: 6 }) : raw;
      const method = deflated.length < raw.length ? 8 : 0;
      const body = method === 8 ? deflated : raw;
      const crc = crc32(raw);
      const flags = /[^\x20-\x7e]/.test(entry.name) ? 0x0800 : 0; // UTF-8 names only when needed
      if (offset + 30 + name.length + body.length > 0xffffffff) throw new Error(`${out} would pass 4 GiB, which needs zip64`);
      const local = Buffer.alloc(30);
      local.writeUInt32LE(0x04034b50, 0);
      local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate, directories)
      local.writeUInt16LE(flags, 6);
      local.writeUInt16LE(method, 8);
      local.writeUInt16LE(time, 10);
      local.writeUInt16LE(date, 12);
      local.writeUInt32LE(crc, 14);
      local.writeUInt32LE(body.length, 18);
      local.writeUInt32LE(raw.length, 22);
      local.writeUInt16LE(name.length, 26);
      local.writeUInt16LE(0, 28);
      const headerOffset = offset;
      write(local);
      write(name);
      write(body);

      const record = Buffer.alloc(46);
      record.writeUInt32LE(0x02014b50, 0);
      record.writeUInt16LE((3 << 8) | 20, 4); // made by: Unix, 2.0 (so the mode below is read)
      record.writeUInt16LE(20, 6);
      record.writeUInt16LE(flags, 8);
      record.writeUInt16LE(method, 10);
      record.writeUInt16LE(time, 12);
      record.writeUInt16LE(date, 14);
      record.writeUInt32LE(crc, 16);
      record.writeUInt32LE(body.length, 20);
      record.writeUInt32LE(raw.length, 24);
      record.writeUInt16LE(name.length, 28);
      // extra length, comment length, disk number, internal attributes: 0
      const type = isDir ? 0o040000 : 0o100000;
      record.writeUInt32LE((((type | entry.mode) << 16) | (isDir ? 0x10 : 0)) >>> 0, 38); // Unix mode; 0x10: MS-DOS directory
      record.writeUInt32LE(headerOffset, 42);
      central.push(record, name);
    }
    const centralOffset = offset;
    for (const part of central) write(part);
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(offset - centralOffset, 12);
    end.writeUInt32LE(centralOffset, 16);
    write(end);
  } finally {
    closeSync(fd);
  }
}
