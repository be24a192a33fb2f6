"""Reads TensorBoard event files without xtts's code: the TFRecord framing with both masked CRC-32C
checks (computed here), and the Event / Summary protocol buffers decoded from the wire format by the
field numbers of TensorFlow's event.proto and summary.proto. Where the `tensorboard` package is
installed, its own EventFileLoader reads the file too and the two readings must agree.
Prints JSON: {"file_version", "scalars": {tag: [[step, value]...]}, "images": {tag: [[step, w, h, png bytes]...]},
"audio": {tag: [[step, rate, frames, wav bytes, content type]...]}, "text": {tag: [[step, markdown]...]},
"hparams": {"start": {"step", "hparams": {key: value}, "start_time_secs"}, "end": {"step", "status", "end_time_secs"}},
"tensorboard": bool}. The hparams plugin's data is decoded by the field numbers of TensorBoard's
plugins/hparams/plugin_data.proto and google/protobuf/struct.proto."""
import json
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(raw):
    o = 0
    while o < len(raw):
        (n,) = struct.unpack_from('<Q', raw, o)
        (lc,) = struct.unpack_from('<I', raw, o + 8)
        assert lc == masked(raw[o:o + 8]), f'length CRC at {o}'
        data = raw[o + 12:o + 12 + n]
        (dc,) = struct.unpack_from('<I', raw, o + 12 + n)
        assert dc == masked(data), f'data CRC at {o}'
        yield data
        o += 16 + n


def varint(b, o):
    x = s = 0
    while True:
        c = b[o]
        o += 1
        x |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return x, o


def fields(b):
    out = {}
    o = 0
    while o < len(b):
        key, o = varint(b, o)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, o = varint(b, o)
        elif wt == 1:
            v = b[o:o + 8]
            o += 8
        elif wt == 5:
            v = b[o:o + 4]
            o += 4
        elif wt == 2:
            n, o = varint(b, o)
            v = b[o:o + n]
            o += n
        else:
            raise ValueError(f'wire type {wt}')
        out.setdefault(f, []).append(v)
    return out


path = sys.argv[1]
raw = open(path, 'rb').read()
result = {'file_version': None, 'scalars': {}, 'images': {}, 'audio': {}, 'text': {}, 'hparams': {},
          'tensorboard': False}
for rec in records(raw):
    ev = fields(rec)
    if 3 in ev:
        result['file_version'] = ev[3][0].decode()
        continue
    step = ev.get(2, [0])[0]
    for value in fields(ev[5][0]).get(1, []):
        v = fields(value)
        tag = v[1][0].decode()
        if 2 in v:
            result['scalars'].setdefault(tag, []).append([step, struct.unpack('<f', v[2][0])[0]])
        if 4 in v:
            im = fields(v[4][0])
            result['images'].setdefault(tag, []).append([step, im[2][0], im[1][0], len(im[4][0]), im[4][0][:8].hex()])
        if 8 in v:
            tensor, plugin_data = fields(v[8][0]), fields(fields(v[9][0])[1][0])
            plugin = plugin_data[1][0].decode()
            if plugin == 'hparams':
                # HParamsPluginData: 1 version, 3 SessionStartInfo, 4 SessionEndInfo; a [0]-shaped float tensor.
                assert tensor[1][0] == 1, tensor
                data = fields(plugin_data[2][0])
                assert data.get(1, [0])[0] == 0, data
                if 3 in data:
                    info = fields(data[3][0])
                    values = {}
                    for entry in info.get(1, []):
                        e = fields(entry)
                        val = fields(e[2][0])
                        if 2 in val:
                            values[e[1][0].decode()] = struct.unpack('<d', val[2][0])[0]
                        elif 3 in val:
                            values[e[1][0].decode()] = val[3][0].decode()
                        elif 4 in val:
                            values[e[1][0].decode()] = bool(val[4][0])
                    result['hparams']['start'] = {
                        'step': step, 'hparams': values, 'start_time_secs': struct.unpack('<d', info[5][0])[0]}
                if 4 in data:
                    info = fields(data[4][0])
                    result['hparams']['end'] = {
                        'step': step, 'status': info[1][0], 'end_time_secs': struct.unpack('<d', info[2][0])[0]}
                continue
            # A string tensor (tf.summary.text): dtype 7, its plugin named in the metadata.
            assert tensor[1][0] == 7 and plugin == 'text', (tensor.get(1), plugin)
            result['text'].setdefault(tag, []).append([step, tensor[8][0].decode()])
        if 6 in v:
            au = fields(v[6][0])
            result['audio'].setdefault(tag, []).append([step, struct.unpack('<f', au[1][0])[0], au[3][0], len(au[4][0]), au[5][0].decode()])

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError:
    EventAccumulator = None
if EventAccumulator is not None:
    acc = EventAccumulator(path, size_guidance={'scalars': 0, 'images': 0, 'audio': 0, 'tensors': 0})
    acc.Reload()
    tags = acc.Tags()
    assert sorted(tags['scalars']) == sorted(result['scalars']), (tags['scalars'], list(result['scalars']))
    assert sorted(tags['images']) == sorted(result['images']), (tags['images'], list(result['images']))
    assert sorted(tags['audio']) == sorted(result['audio']), (tags['audio'], list(result['audio']))
    for tag, rows in result['scalars'].items():
        assert [[e.step, e.value] for e in acc.Scalars(tag)] == rows, tag
    for tag, rows in result['images'].items():
        assert [[e.step, e.width, e.height] for e in acc.Images(tag)] == [r[:3] for r in rows], tag
    for tag, rows in result['audio'].items():
        assert [[e.step, e.sample_rate, e.length_frames] for e in acc.Audio(tag)] == [r[:3] for r in rows], tag
    hparams_tags = [f'_hparams_/session_{k}_info' for k in ('start', 'end') if k in result['hparams']]
    assert sorted(tags['tensors']) == sorted([*result['text'], *hparams_tags]), (tags['tensors'], list(result['text']))
    if hparams_tags:
        # TensorBoard's hparams plugin reads its own protocol buffers from the summaries' metadata.
        from tensorboard.plugins.hparams import metadata as hp_metadata
        contents = acc.PluginTagToContent('hparams')
        assert sorted(contents) == sorted(hparams_tags), contents
        if 'start' in result['hparams']:
            start = hp_metadata.parse_session_start_info_plugin_data(contents['_hparams_/session_start_info'])
            got = {k: getattr(v, v.WhichOneof('kind')) for k, v in start.hparams.items()}
            assert got == result['hparams']['start']['hparams'], (got, result['hparams']['start'])
        if 'end' in result['hparams']:
            end = hp_metadata.parse_session_end_info_plugin_data(contents['_hparams_/session_end_info'])
            assert end.status == result['hparams']['end']['status'], end
    for tag, rows in result['text'].items():
        events = acc.Tensors(tag)
        assert [[e.step, e.tensor_proto.string_val[0].decode()] for e in events] == rows, tag
        assert acc.SummaryMetadata(tag).plugin_data.plugin_name == 'text', tag
    result['tensorboard'] = True
print(json.dumps(result))
