"""Tests for protocol.data: pinned raw files, IDX parsing, the 11 draws and the 9×9 resize."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from bundle.cli import app
from protocol import data
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE, SHARED_MNIST

runner = CliRunner()


def _one_line_error(result) -> str:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rev88: error: "), result.stderr
    return lines[0]


def test_pins_match_the_shipped_files_and_the_original_protocol():
    protocol = json.loads((ORIGINAL_ARCHIVE / "protocol.json").read_text())["raw_sources"]
    for key, pin in data.RAW_FILES.items():
        raw = (SHARED_MNIST / pin.name).read_bytes()
        assert len(raw) == pin.size_bytes
        assert hashlib.sha256(raw).hexdigest() == pin.sha256
        assert hashlib.md5(raw).hexdigest() == pin.md5
        if key in protocol:
            assert protocol[key] == {"file": pin.name, "sha256": pin.sha256, "md5": pin.md5}
    assert [r["status"] for r in data.raw_status(SHARED_MNIST)] == ["ok"] * 4


def test_default_raw_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.delenv("REV88_RAW_DIR", raising=False)
    assert data.default_raw_dir() == SHARED_MNIST
    monkeypatch.setenv("REV88_RAW_DIR", str(tmp_path))
    assert data.default_raw_dir() == tmp_path


@pytest.fixture
def raw_copy(tmp_path):
    folder = tmp_path / "raw"
    shutil.copytree(SHARED_MNIST, folder)
    return folder


def test_altered_byte_is_refused_naming_both_hashes(raw_copy):
    path = raw_copy / "train-labels-idx1-ubyte.gz"
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    path.write_bytes(bytes(raw))
    actual = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(BundleError) as info:
        data.verify_raw_file("train_labels", raw_copy)
    message = str(info.value)
    assert data.RAW_FILES["train_labels"].sha256 in message and actual in message and "rev88 data fetch" in message
    line = _one_line_error(runner.invoke(app, ["data", "check", "--raw-dir", str(raw_copy)]))
    assert "train-labels-idx1-ubyte.gz" in line and "sha256 mismatch" in line


def test_missing_and_truncated_files_fail_qualify_with_one_line(raw_copy, tmp_path):
    images = raw_copy / "train-images-idx3-ubyte.gz"
    images.write_bytes(images.read_bytes()[:50_000])
    line = _one_line_error(runner.invoke(app, ["qualify", "--device", "cpu", "--draws", "0",
                                               "--raw-dir", str(raw_copy), "--out", str(tmp_path / "run")]))
    assert "train-images-idx3-ubyte.gz" in line and data.RAW_FILES["train_images"].sha256 in line
    assert not (tmp_path / "run" / "qualify").exists()
    images.unlink()
    line = _one_line_error(runner.invoke(app, ["data", "check", "--raw-dir", str(raw_copy)]))
    assert "missing" in line


def test_truncated_gzip_and_bad_headers_are_refused():
    labels_gz = (SHARED_MNIST / "train-labels-idx1-ubyte.gz").read_bytes()
    with pytest.raises(BundleError, match="cannot decompress"):
        data.parse_idx_labels(labels_gz[: len(labels_gz) // 2])
    raw = bytearray(gzip.decompress(labels_gz))
    assert data.parse_idx_labels(gzip.compress(bytes(raw))).shape == (60000,)
    raw[3] = 0x03  # magic 2049 -> 2051
    with pytest.raises(BundleError, match=r"header is \(2051, 60000\), expected \(2049, 60000\)"):
        data.parse_idx_labels(gzip.compress(bytes(raw)))
    raw[3] = 0x01
    with pytest.raises(BundleError, match="payload is 59999 bytes"):
        data.parse_idx_labels(gzip.compress(bytes(raw[:-1])))
    raw[8] = 10
    with pytest.raises(BundleError, match="10 > 9"):
        data.parse_idx_labels(gzip.compress(bytes(raw)))
    header = np.array([2051, 60000, 28, 27], dtype=">u4").tobytes()
    with pytest.raises(BundleError, match="expected \\(2051, 60000, 28, 28\\)"):
        data.parse_idx_images(gzip.compress(header + bytes(60000 * 28 * 27)))


def test_draw_indices_and_label_hashes_equal_the_frozen_ones():
    manifest = json.loads((ORIGINAL_ARCHIVE / "draw-manifest.json").read_text())["draws"]
    accuracy = json.loads((ORIGINAL_ARCHIVE / "accuracy.json").read_text())["rows"]
    for i in range(data.DRAW_COUNT):
        draw = data.load_draw(i)
        assert draw.dataset_seed == manifest[i]["dataset_seed"] == 2026091400 + i
        assert draw.index_hashes() == {k: manifest[i][k] for k in ("train_indices_sha256", "test_indices_sha256")}
        assert draw.input_hashes()["train_labels"] == manifest[i]["input_sha256"]["train_labels"]
        assert data.array_sha256(data.evaluation_labels(i)) == accuracy[i]["test_labels_sha256"]
        assert not np.intersect1d(draw.train_indices, draw.test_indices).size
        inputs = draw.learner_inputs()
        assert list(inputs) == ["train_images", "train_labels", "test_images"]
        assert inputs["train_images"].shape == (10000, 1, 9, 9) and inputs["train_images"].dtype == np.float32
        assert inputs["train_images"].flags.c_contiguous and inputs["train_labels"].dtype == np.int64


def test_draw_index_out_of_range_and_unknown_resize():
    with pytest.raises(BundleError, match="out of range"):
        data.load_draw(11)
    with pytest.raises(BundleError, match="unknown resize"):
        data.load_draw(0, resize="bilinear")


def test_overlap_weights_are_exact_box_areas():
    ov = data.overlap_matrix()
    assert ov.dtype == np.int64 and ov.shape == (9, 28)
    assert (ov.sum(axis=1) == 28).all() and (ov.sum(axis=0) == 9).all()
    assert ov.min() == 0 and ov.max() == 9
    weights = (ov / 28.0).astype(np.float32)
    assert sorted({round(float(w) * 28) for w in weights.ravel() if w}) == list(range(1, 10))


def _float32_nearest_even(value: Fraction) -> np.float32:
    """Round a non-negative rational to float32 by hand (independent of numpy's casts)."""
    if value == 0:
        return np.float32(0)
    exponent = value.numerator.bit_length() - value.denominator.bit_length() - 24
    while value / Fraction(2) ** exponent >= 2**24:
        exponent += 1
    while value / Fraction(2) ** exponent < 2**23:
        exponent -= 1
    mantissa = round(value / Fraction(2) ** exponent)  # Fraction rounds half to even
    return np.float32(mantissa * 2.0**exponent)


def test_exact_resize_equals_a_pure_fraction_reference():
    images, _ = data.load_training_split()
    picks = [0, 1, 7, 12345, 59999]
    resized = data.resize_exact(images[picks])
    assert resized.shape == (5, 1, 9, 9) and resized.dtype == np.float32 and resized.flags.c_contiguous
    ov = data.overlap_matrix().tolist()
    for n, row in enumerate(picks):
        img = images[row].tolist()
        for a in range(9):
            for b in range(9):
                numerator = sum(ov[a][i] * ov[b][k] * img[i][k] for i in range(28) for k in range(28))
                expected = _float32_nearest_even(Fraction(numerator, 28 * 28 * 255))
                assert resized[n, 0, a, b] == expected, (row, a, b)


def test_exact_resize_equals_integer_arithmetic_on_many_rows():
    """The two float64 GEMMs give the numerator an int64 product gives, on 3,000 real rows (not a sample of 5)."""
    images, _ = data.load_training_split()
    rows = images[::20]
    ov = data.overlap_matrix()  # int64
    numerator = np.matmul(np.matmul(ov, rows.astype(np.int64)), ov.T)  # exact integers, no float anywhere
    expected = (numerator / 199920.0).astype(np.float32)[:, None, :, :]
    assert np.array_equal(data.resize_exact(rows).view(np.uint32), expected.view(np.uint32))


def test_resize_range_and_gemm_variant():
    images, _ = data.load_training_split()
    exact = data.resize_exact(images[:2000])
    gemm = data.resize_gemm_float32(images[:2000])
    assert exact.min() >= 0.0 and exact.max() <= 1.0 and exact.max() == 1.0
    assert gemm.shape == exact.shape and gemm.dtype == np.float32 and gemm.min() >= 0.0 and gemm.max() <= 1.0
    assert np.abs(gemm - exact).max() <= 2.0**-22  # a few float32 ulps apart: same average, other rounding


def test_fetch_from_a_file_mirror_and_refuse_altered_or_unreachable(tmp_path):
    dest = tmp_path / "dest"
    mirror = SHARED_MNIST.resolve().as_uri() + "/"
    result = runner.invoke(app, ["data", "fetch", "--dest", str(dest), "--mirror", mirror])
    assert result.exit_code == 0, result.output
    assert [r["status"] for r in data.raw_status(dest)] == ["ok"] * 4
    assert data.fetch_raw_files(dest, (mirror,), keys=["train_labels"])[0]["status"] == "present"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not the file")
    with pytest.raises(BundleError, match="gave sha256"):
        data.fetch_raw_files(tmp_path / "d2", (bad.as_uri() + "/",), keys=["t10k_labels"])
    assert not (tmp_path / "d2").exists()  # no partial file, and not the folder made for it, left behind
    line = _one_line_error(runner.invoke(app, ["data", "fetch", "--dest", str(tmp_path / "d3"),
                                               "--mirror", "http://127.0.0.1:9/"]))
    assert "could not download" in line


def test_a_failed_fetch_leaves_no_folder_it_made_and_keeps_those_that_were_there(tmp_path):
    offline = ["--mirror", "http://127.0.0.1:9/"]
    nested = tmp_path / "x" / "mn" / "a"
    assert runner.invoke(app, ["data", "fetch", "--dest", str(nested), *offline]).exit_code == 2
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "there"
    existing.mkdir()
    assert runner.invoke(app, ["data", "fetch", "--dest", str(existing / "new"), *offline]).exit_code == 2
    assert existing.is_dir() and list(existing.iterdir()) == []


def test_torch_free_modules_do_not_import_torch():
    code = ("import sys, protocol.data, bundle.phases.qualify, bundle.commands.data, bundle.commands.qualify, "
            "bundle.cli; assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
