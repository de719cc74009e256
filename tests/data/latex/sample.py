"""Module doc with :math:`\lambda` in it."""


def f():
    r"""Raw docstring.

    .. math::

        \frac{1}{2}

        y = \sqrt{x}

    Text with :math:`e^{x}` role.
    """


def g():
    """Escaped: :math:`\\beta`."""
