"""pt2kit.runtime.common.backends: which backend a tool tests, and the one function that asks torch which names
it registers (on the installed torch)."""

from __future__ import annotations

import pytest

from pt2kit.runtime.common.backends import (
    check_registered,
    handover,
    inductor_options,
    piped_backend,
    registered,
    stream_backend,
)
from pt2kit.runtime.common.errors import UsageError
from pt2kit.schema import BlobRef, Captured

CODE = BlobRef(path="blobs/ab/ab.py", sha256="ab" * 32, size=1, media_type="text/x-python")


def captured(**kw):
    return Captured(command=["python", "t.py"], compile_id="0/0", code=CODE, **kw)


def test_registered_lists_every_name_torch_compile_takes_here_its_testing_only_ones_too():
    names = registered()
    assert {"inductor", "aot_eager", "eager", "cudagraphs", "relu_compile_error_TESTING_ONLY",
            "relu_accuracy_error_TESTING_ONLY"} <= set(names)
    for name in ("aot_eager", "cudagraphs", "relu_compile_error_TESTING_ONLY", "aoti"):
        check_registered(name)  # taken: no error


def test_a_name_torch_does_not_register_is_one_usage_line():
    with pytest.raises(UsageError) as e:
        check_registered("my_script_backend")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("backend 'my_script_backend': torch registers no backend of that name")
    assert "--backend FILE.py:NAME" in msg


def test_the_record_backend_travels_by_name_and_the_flag_wins():
    c = captured(backend="relu_compile_error_TESTING_ONLY")
    assert piped_backend(None, c, "t.py[0/0]", "minify") == "relu_compile_error_TESTING_ONLY"
    assert piped_backend("aot_eager", c, "t.py[0/0]", "minify") == "aot_eager"
    assert piped_backend(None, captured(backend="aoti"), "t.py[aoti/0]", "kdiff") == "aoti"
    assert piped_backend(None, None, "m.py", "kdiff") == "inductor"  # a model record no capture wrote
    assert piped_backend(None, captured(), "t.py[0/0]", "kdiff") == "inductor"
    # torch.compile's mode travels as the settings it stands for (read in the script's process), options over it
    tuned = captured(backend="inductor", mode="max-autotune", options={"coordinate_descent_tuning": "False"},
                     mode_options={"max_autotune": "True", "coordinate_descent_tuning": "True"})
    assert piped_backend(None, tuned, "<stdin>:1: t.py[0/0]", "kdiff") == "inductor"
    assert inductor_options(tuned) == {"inductor.max_autotune": "True", "inductor.coordinate_descent_tuning": "False"}
    # what cannot travel (an option that is code, a mode no capture expanded, options to another backend) is
    # refused in one line, never dropped: the script's compiler is never tested without what it was told
    for c, lost in [(captured(backend="inductor", options={"trace.enabled": "False", "f": "<object>"}), "option f=<object>"),
                    (captured(backend="inductor", mode="max-autotune"), "mode=max-autotune"),
                    (captured(backend="aot_eager", options={"debug": "True"}), "option debug=True")]:
        with pytest.raises(UsageError) as e:
            piped_backend(None, c, "<stdin>:1: t.py[0/0]", "kdiff")
        assert str(e.value) == (f"<stdin>:1: t.py[0/0]: the script compiled it with {c.backend} and {lost}, which kdiff "
                                "cannot apply from a stream (only Inductor's literal settings travel); give --backend, "
                                "and Inductor settings as --config inductor.KEY=VALUE")
        assert piped_backend("inductor", c, "t.py[0/0]", "kdiff") == "inductor"  # the user's --backend wins
    # its options are the settings it compiled under, as --config takes them (a string without its quotes)
    opts = captured(backend="inductor", options={"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'", "debug": "True"})
    assert inductor_options(opts) == {"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "inductor.debug": "True"}
    assert inductor_options(captured(backend="aot_eager", options={"debug": "True"})) == {}


def test_a_backend_that_is_code_is_never_taken_from_a_stream_the_line_says_what_to_give():
    c = captured(backend="my_backend", backend_code="/w/t.py:my_backend", backend_in_script=True)
    with pytest.raises(UsageError) as e:
        piped_backend(None, c, "<stdin>:2: t.py[0/0]", "kdiff")
    assert str(e.value) == (
        "<stdin>:2: t.py[0/0] was compiled with the script's own backend my_backend (defined in the script, "
        "/w/t.py): a stream never makes kdiff import code; to test it, give --backend /w/t.py:my_backend")
    assert piped_backend("/w/t.py:my_backend", c, "t.py[0/0]", "kdiff") == "/w/t.py:my_backend"
    # an aot_autograd object no module-level name reaches, and a `python -c` script's function
    lost = captured(backend="aot_autograd", backend_code="/w/my lib.py:<AotAutograd object>")
    assert handover(lost, "t.py[0/0]", "minify").endswith(
        "no module-level name reaches it (<AotAutograd object>); bind it to one in /w/my lib.py (NAME = ...) and "
        "give --backend '/w/my lib.py:NAME'")
    inline = captured(backend="f", backend_code="<string>:f", backend_in_script=True)
    assert handover(inline, "t.py[0/0]", "minify").endswith("put it in a file and give --backend FILE.py:NAME")


@pytest.mark.parametrize("named", ["/some/dir/evil.py:bk", "evil:bk", "this:s", "os.system", "../evil.py", "evil.py"])
def test_a_record_whose_backend_names_code_is_refused_and_nothing_is_imported(named):
    """Issue 55, finding 1: a record's captured.backend edited to FILE.py:NAME, module:attr or a dotted name
    (backend_code null) was handed to the worker as a --backend, which imported it. The one rule
    (stream_backend) every tool asks: only a name torch registers travels; the user's --backend wins."""
    c = captured(backend=named)
    with pytest.raises(UsageError) as e:
        piped_backend(None, c, "<stdin>:2: t.py[0/0]", "kdiff")
    assert str(e.value) == (
        f"<stdin>:2: t.py[0/0]: the stream names code as its backend ({named}), which kdiff will not import: a "
        "stream names only a backend torch registers; to test your own, give --backend FILE.py:NAME")
    with pytest.raises(UsageError) as e:
        stream_backend(named, "t.py[0/0]", "minify", diff=True)  # a failing diff's own --backend, to minify
    assert str(e.value) == (f"t.py[0/0]: the diff compiled it with --backend {named}, code a stream does not run: "
                            f"give minify --backend {named}")
    # the user names it on the command line: theirs, as given (equal to the stream's word or not)
    assert piped_backend(named, c, "t.py[0/0]", "kdiff") == named


def test_a_name_of_a_registered_backends_shape_travels_and_is_looked_up_in_torchs_registry():
    for name in [*registered(), "aoti", "my-entry-point_backend"]:
        assert stream_backend(name, "t.py[0/0]", "kdiff") == name
    with pytest.raises(UsageError, match="torch registers no backend of that name"):
        check_registered("my-entry-point_backend")  # the worker's lookup, before anything compiles with it


def test_code_the_script_installed_into_the_compiler_is_named_with_the_flag_that_hands_it_over():
    # issue 47: a post_grad_custom_post_pass the script set was dropped from the record without a word, so
    # kdiff ran Inductor without it and passed; now the tool names it and the exact --config, exit 2
    c = captured(backend="inductor", code_settings={"inductor.post_grad_custom_post_pass": "/w/t.py:corrupt"})
    with pytest.raises(UsageError) as e:
        piped_backend(None, c, "<stdin>:2: t.py[0/0]", "kdiff")
    assert str(e.value) == (
        "<stdin>:2: t.py[0/0]: the script set inductor.post_grad_custom_post_pass to code (/w/t.py:corrupt): a "
        "stream never makes kdiff import code; to run with it, give --config post_grad_custom_post_pass=/w/t.py:corrupt")
    # --backend does not hand a pass over; --config with the key does, prefixed or not
    with pytest.raises(UsageError):
        piped_backend("inductor", c, "t.py[0/0]", "kdiff")
    for key in ("post_grad_custom_post_pass", "inductor.post_grad_custom_post_pass"):
        assert piped_backend(None, c, "t.py[0/0]", "minify", config={key: "/w/t.py:corrupt"}) == "inductor"
    # a lambda no name reaches
    lam = captured(backend="inductor", code_settings={"inductor.joint_custom_post_pass": "/w/t.py:<lambda>"})
    with pytest.raises(UsageError, match=r"bind it to a module-level name in a file and give --config "
                                         r"joint_custom_post_pass=FILE.py:NAME$"):
        piped_backend(None, lam, "t.py[0/0]", "kdiff")


def test_a_decomposition_the_script_installed_is_handed_over_only_by_a_backend_of_the_users():
    c = captured(backend="inductor", code_settings={"decomposition:aten.silu.default": "/w/t.py:wrong_silu"})
    with pytest.raises(UsageError) as e:
        piped_backend(None, c, "t.py[0/0]", "minify", config={"decomposition:aten.silu.default": "x"})
    assert str(e.value) == (
        "t.py[0/0]: the script installed its own decomposition of aten.silu.default into Inductor's table "
        "(/w/t.py:wrong_silu): a stream never makes minify import code; give --backend FILE.py:NAME, a backend "
        "that installs it and compiles")
    assert piped_backend("/w/t.py:inductor_with_wrong_silu", c, "t.py[0/0]", "minify") == "/w/t.py:inductor_with_wrong_silu"
