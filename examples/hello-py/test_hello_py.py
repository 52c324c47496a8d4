"""Unit tests of hello-py's argument checks, rendering and deadline handling (stdlib unittest;
run by the conformance crate's tests with the hello-py venv, or by hand:
`.deps/hello-py/bin/python -m unittest discover -s examples/hello-py`)."""

import threading
import time
import unittest

import grpc

import hello_py


class FakeContext:
    """The part of grpc.ServicerContext that slow() uses."""

    def __init__(self, remaining):
        self.remaining = remaining
        self.callbacks = []

    def time_remaining(self):
        return self.remaining

    def add_callback(self, callback):
        self.callbacks.append(callback)
        return True


class Arguments(unittest.TestCase):
    def test_echo_requires_a_string_message(self):
        v = hello_py.VALIDATORS["echo.v1"]
        hello_py.check(v, {"message": "hi"})
        for bad in [{}, {"message": 5}, {"message": "hi", "extra": 1}, "hi"]:
            with self.assertRaises(hello_py.InvalidArguments, msg=repr(bad)):
                hello_py.check(v, bad)

    def test_slow_takes_an_integer_in_range(self):
        v = hello_py.VALIDATORS["slow.v1"]
        hello_py.check(v, {"ms": 0})
        hello_py.check(v, {"ms": 60000})
        for bad in [{"ms": 60001}, {"ms": -1}, {"ms": 1.5}, {"ms": "10"}, {"ms": True}]:
            with self.assertRaises(hello_py.InvalidArguments, msg=repr(bad)):
                hello_py.check(v, bad)

    def test_empty_text_is_an_empty_object_and_garbage_is_refused(self):
        self.assertEqual(hello_py.parse_arguments(""), {})
        with self.assertRaises(hello_py.InvalidArguments):
            hello_py.parse_arguments("{")

    def test_bad_output_violates_its_output_schema(self):
        schema = hello_py.TOOLS["bad_output.v1"]["output"]
        self.assertFalse(hello_py.jsonschema.Draft202012Validator(schema).is_valid(hello_py.bad_output()))


class Rendering(unittest.TestCase):
    def test_the_plan_renders_goal_and_steps(self):
        self.assertEqual(hello_py.render_plan({"goal": "ship it", "steps": 2}),
                         "Make a plan to reach this goal: ship it. Use 2 steps.")
        self.assertEqual(hello_py.render_plan({"goal": "rest"}),
                         "Make a plan to reach this goal: rest. Use 3 steps.")

    def test_the_plan_arguments_are_checked(self):
        hello_py.check(hello_py.PLAN_VALIDATOR, {"goal": "x", "steps": 10})
        for bad in [{}, {"goal": ""}, {"goal": "x", "steps": 11}, {"goal": "x", "steps": "2"}]:
            with self.assertRaises(hello_py.InvalidArguments, msg=repr(bad)):
                hello_py.check(hello_py.PLAN_VALIDATOR, bad)

    def test_greetings(self):
        self.assertEqual(hello_py.read_greeting("hello://greeting", "p"), "Hello from p!")
        self.assertEqual(hello_py.read_greeting("hello://greeting/ada", "p"), "Hello, ada! (from p)")
        for uri in ["hello://greeting/", "hello://greeting/a/b", "hello://other"]:
            self.assertIsNone(hello_py.read_greeting(uri, "p"), uri)


class Deadline(unittest.TestCase):
    def test_slow_stops_a_margin_before_the_deadline(self):
        started = time.monotonic()
        with self.assertRaises(hello_py.Failure) as raised:
            hello_py.slow(5000, FakeContext(0.2))
        elapsed = time.monotonic() - started
        self.assertEqual(raised.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertLess(elapsed, 0.2)
        self.assertGreaterEqual(elapsed, 0.2 - hello_py.DEADLINE_MARGIN_S - 0.01)

    def test_slow_within_its_deadline_sleeps_in_full(self):
        started = time.monotonic()
        self.assertEqual(hello_py.slow(50, FakeContext(5.0)), {"slept_ms": 50})
        self.assertGreaterEqual(time.monotonic() - started, 0.05)

    def test_slow_stops_when_the_call_ends(self):
        context = FakeContext(None)
        threading.Timer(0.05, lambda: [c() for c in context.callbacks]).start()
        started = time.monotonic()
        hello_py.slow(5000, context)
        self.assertLess(time.monotonic() - started, 1.0)

    def test_code_names_match_the_rust_example(self):
        self.assertEqual(hello_py.code_name(grpc.StatusCode.INVALID_ARGUMENT), "InvalidArgument")
        self.assertEqual(hello_py.code_name(grpc.StatusCode.DEADLINE_EXCEEDED), "DeadlineExceeded")


if __name__ == "__main__":
    unittest.main()
