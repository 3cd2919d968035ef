"""Loss curves as PNG files, drawn on matplotlib's Agg canvas (never a window, whatever backend
pyplot uses)."""
import os
import sys


def save_loss_curve(losses, path, title="training loss", xlabel="step", ylabel="loss",
                    log=None, series=None):
    """Draw `losses` (a sequence of numbers; or several, given as `series={label: values}`)
    against their index and save the picture as `path` (PNG; its directory is created).
    `log=None` picks a log scale when the values are positive and span more than a factor of
    100. Returns the path, or None with a message on stderr when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        print(f"(matplotlib is not installed: the loss curve {os.path.basename(path)} is not "
              f"drawn; pip install matplotlib)", file=sys.stderr)
        return None
    curves = dict(series) if series is not None else {"loss": losses}
    values = [float(v) for vs in curves.values() for v in vs]
    if log is None:
        log = bool(values) and min(values) > 0 and max(values) > 100 * min(values)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    # a Figure on an Agg canvas, not pyplot: nothing global changes, no window can open
    fig = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    for label, vs in curves.items():
        ax.plot(range(1, len(vs) + 1), [float(v) for v in vs], label=label, linewidth=1.2)
    if log:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, alpha=0.3)
    if len(curves) > 1:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
