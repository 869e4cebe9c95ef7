"""Without scikit-learn installed, the estimators keep its conventions (get_params/set_params, repr,
fit_transform, NotFitted as AttributeError) on their own base class."""
import subprocess
import sys
import textwrap


def test_the_estimators_work_without_scikit_learn():
    code = textwrap.dedent("""
        import sys
        sys.modules["sklearn"] = None   # import sklearn now raises ImportError
        import pickle
        import numpy as np
        import orrery
        m = orrery.HSSNE(alpha=0.3, perplexity=10.0, max_iter=100)
        assert type(m).__mro__[2].__name__ == "_MinimalBase", type(m).__mro__
        assert repr(m) == "HSSNE(alpha=0.3, max_iter=100, perplexity=10.0)", repr(m)
        assert repr(orrery.HSSNE(alpha=1.0)) == "HSSNE()"
        assert m.set_params(alpha=0.4).get_params()["alpha"] == 0.4
        try:
            m.set_params(bogus=1)
            raise SystemExit("set_params accepted an unknown parameter")
        except ValueError as e:
            assert "bogus" in str(e)
        try:
            orrery.HSSNE().transform(np.zeros((3, 2)))
            raise SystemExit("transform before fit")
        except AttributeError as e:
            assert "not fitted" in str(e)
        X = np.random.default_rng(0).normal(size=(60, 4))
        Y = m.fit_transform(X)
        assert Y.shape == (60, 2)
        assert np.array_equal(pickle.loads(pickle.dumps(m)).embedding_, Y)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
