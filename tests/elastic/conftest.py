import pytest

from .digits_setup import train_digits, write_digits


@pytest.fixture(scope="session")
def digits_npz(tmp_path_factory):
    return str(write_digits(tmp_path_factory.mktemp("digits") / "digits.npz"))


@pytest.fixture(scope="session")
def reference(digits_npz):
    """The digits MLP trained by one learner, no resize: (state_dict, history, trainer)."""
    return train_digits(digits_npz, max_gpus=1, delay=0.0)
