import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { open } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { loadConfig } from '../../cli/config.ts';
import { detectType, ForbiddenTypes, TYPE_SAMPLE_SIZE } from './file-type.ts';

/** ATTACHMENT_FORBIDDEN_TYPES as shipped. */
const DEFAULT_LIST = loadConfig({}).auth.attachments.forbiddenTypes;
const DEFAULT_EXTENSIONS = DEFAULT_LIST.filter((entry) => !entry.includes('/'));
const DEFAULT_MIMES = DEFAULT_LIST.filter((entry) => entry.includes('/'));

/**
 * A ZIP archive with stored entries (local headers, central directory, end record): enough for
 * file-type, which tells jar and apk from other ZIPs by their entry names. `unzip -t` accepts it.
 */
function zip(entries: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(entries)) {
    const nameBytes = Buffer.from(name);
    const data = Buffer.from(text);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc32(data), 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    central.writeUInt16LE(20, 6); // version needed
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc32(data), 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const filler = (size: number) => Buffer.alloc(size, 0x20);

/** The first bytes of this machine's Node binary: a real ELF executable. */
async function elfSample(): Promise<Buffer> {
  const file = await open(process.execPath);
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(TYPE_SAMPLE_SIZE), 0, TYPE_SAMPLE_SIZE, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** Executables and scripts by their content, each given a harmless name and what it is detected as. */
const DISGUISED: Array<{
  what: string;
  name: string;
  content: () => Buffer | Promise<Buffer>;
  ext: string;
  mime: string;
}> = [
  {
    what: 'a Windows PE executable',
    name: 'invoice.pdf',
    content: () =>
      Buffer.concat([
        Buffer.from('MZ'),
        Buffer.alloc(58),
        Buffer.from([0x80, 0, 0, 0]),
        Buffer.alloc(64),
        Buffer.from('PE\0\0'),
        filler(4000),
      ]),
    ext: 'exe',
    mime: 'application/x-msdownload',
  },
  {
    what: 'an ELF binary (the Node executable)',
    name: 'holiday.jpg',
    content: elfSample,
    ext: 'elf',
    mime: 'application/x-elf',
  },
  {
    what: 'a Java archive (a ZIP with a manifest)',
    name: 'photos.zip',
    content: () =>
      zip({
        'META-INF/MANIFEST.MF': 'Manifest-Version: 1.0\r\nMain-Class: Payload\r\n',
        'Payload.class': '\xca\xfe\xba\xbe',
      }),
    ext: 'jar',
    mime: 'application/java-archive',
  },
  {
    what: 'an Android package (a ZIP with classes.dex)',
    name: 'slides.zip',
    content: () => zip({ 'AndroidManifest.xml': '<manifest/>', 'classes.dex': 'dex\n035\0' }),
    ext: 'apk',
    mime: 'application/vnd.android.package-archive',
  },
  {
    what: 'Java bytecode',
    name: 'data.bin',
    content: () => Buffer.concat([Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34]), filler(200)]),
    ext: 'class',
    mime: 'application/java-vm',
  },
  {
    what: 'a Mach-O binary',
    name: 'readme.txt',
    content: () => Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 0x07, 0x00, 0x00, 0x01]), filler(200)]),
    ext: 'macho',
    mime: 'application/x-mach-binary',
  },
  {
    what: 'a Debian package',
    name: 'backup.tar',
    content: () =>
      Buffer.concat([
        Buffer.from('!<arch>\ndebian-binary   1342943816  0     0     100644  4         `\n2.0\n'),
        filler(200),
      ]),
    ext: 'deb',
    mime: 'application/x-deb',
  },
  {
    what: 'an RPM package',
    name: 'backup.gz',
    content: () => Buffer.concat([Buffer.from([0xed, 0xab, 0xee, 0xdb, 3, 0]), filler(200)]),
    ext: 'rpm',
    mime: 'application/x-rpm',
  },
  {
    what: 'a Windows shortcut',
    name: 'link.txt',
    content: () => Buffer.concat([Buffer.from('4c0000000114020000000000c000000000000046', 'hex'), filler(200)]),
    ext: 'lnk',
    mime: 'application/x.ms.shortcut',
  },
  {
    what: 'a registry file',
    name: 'settings.ini',
    content: () => Buffer.from('REGEDIT4\r\n\r\n[HKEY_CURRENT_USER\\Software\\X]\r\n'),
    ext: 'reg',
    mime: 'application/x-ms-regedit',
  },
  {
    what: 'a #! script',
    name: 'notes.txt',
    content: () => Buffer.from('#!/bin/sh\nrm -rf ~\n'),
    ext: 'sh',
    mime: 'text/x-shellscript',
  },
];

describe('ATTACHMENT_FORBIDDEN_TYPES: the forbidden-type check', () => {
  const forbidden = new ForbiddenTypes(DEFAULT_LIST);

  it("has the spec's executables and scripts on the default list", () => {
    for (const ext of ['exe', 'dll', 'msi', 'bat', 'cmd', 'com', 'scr', 'js', 'vbs', 'jar', 'ps1', 'sh']) {
      assert.ok(DEFAULT_EXTENSIONS.includes(ext), `.${ext} is on the default list`);
    }
  });

  for (const ext of DEFAULT_EXTENSIONS) {
    it(`refuses a file named .${ext}, in any case and with trailing dots or spaces`, () => {
      for (const name of [`harmless.${ext}`, `HARMLESS.${ext.toUpperCase()}`, `report.pdf.${ext}`, `run.${ext}. .`]) {
        assert.equal(forbidden.reason(name, undefined), `files named .${ext} are not allowed`, name);
      }
    });
  }

  it('allows names that only contain a forbidden extension elsewhere', () => {
    for (const name of ['report.pdf', 'setup.exe.txt', 'exe', 'sh-notes.md', 'my.jar.of.honey.jpg']) {
      assert.equal(forbidden.reason(name, undefined), undefined, name);
    }
  });

  for (const sample of DISGUISED) {
    it(`refuses ${sample.what} by its content, named ${sample.name}`, async () => {
      const detected = await detectType(await sample.content());
      assert.deepEqual(detected, { ext: sample.ext, mime: sample.mime }, 'detected from the bytes');
      assert.match(
        forbidden.reason(sample.name, detected) ?? 'allowed',
        new RegExp(`^its content is ${sample.mime.replace(/[.+]/g, '\\$&')} \\(\\.${sample.ext}\\)$`),
      );
    });
  }

  it('refuses by a MIME-only entry the detected type, never the name', async () => {
    const onlyMime = new ForbiddenTypes(['application/x-elf']);
    const elf = await detectType(await elfSample());
    assert.match(onlyMime.reason('holiday.jpg', elf) ?? 'allowed', /application\/x-elf/);
    assert.equal(onlyMime.reason('tool.elf', undefined), undefined, 'a MIME entry does not match names');
    assert.equal(
      onlyMime.reason('setup.exe', await detectType(await DISGUISED[0]!.content())),
      undefined,
      'nor other types',
    );
  });

  it("refuses by the default list's MIME entries alone every disguised type whose MIME type is on it", async () => {
    const mimesOnly = new ForbiddenTypes(DEFAULT_MIMES);
    const covered = DISGUISED.filter((sample) => DEFAULT_MIMES.includes(sample.mime));
    assert.ok(covered.length >= 6, `${covered.map((s) => s.mime)}`);
    for (const sample of covered) {
      assert.ok(mimesOnly.reason(sample.name, await detectType(await sample.content())), sample.what);
    }
  });

  it('allows ordinary documents, plain ZIPs and text under harmless names', async () => {
    const allowed: Array<[string, Buffer]> = [
      ['contract.pdf', Buffer.concat([Buffer.from('%PDF-1.4\n'), filler(2000), Buffer.from('\n%%EOF\n')])],
      ['photos.zip', zip({ 'readme.txt': 'holiday photos', 'img/1.txt': 'one' })],
      ['notes.txt', Buffer.from('Meeting at 10.\n')],
    ];
    for (const [name, content] of allowed) {
      assert.equal(forbidden.reason(name, await detectType(content)), undefined, name);
    }
  });
});
