"""A 16-bit PCM WAV encoder, what audio summaries need (as `tf.audio.encode_wav`)."""
import struct

import numpy as np


def encode_wav(audio, sample_rate):
    """WAV bytes of float samples [t, c] in [-1, 1] (clipped; NaN -> 0), 16-bit PCM, as
    `tf.audio.encode_wav`: each sample becomes round(x * 32767)."""
    audio = np.asarray(audio, np.float64)
    t, c = audio.shape
    x = np.where(np.isnan(audio), 0.0, np.clip(audio, -1.0, 1.0)) * 32767.0
    # std::round: halves away from zero (NumPy's rint rounds them to even)
    pcm = (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, c, sample_rate, sample_rate * c * 2, c * 2, 16)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(pcm)) + b"WAVE"
            + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"data" + struct.pack("<I", len(pcm)) + pcm)
