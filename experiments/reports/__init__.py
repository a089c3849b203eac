"""Figures and tables from results directories: the paper's figures, the bounds' coverage,
the peers table, the privacy audit and the README's numbers.

Every module reads results through :func:`experiments.harness.results_reader.load` and
draws mechanisms as :mod:`experiments.reports.style` says, from what they are
(registry name, options, the ``private`` and ``neighbouring`` columns, the
class's ``display_name``), never from their labels.  The command lines are
``duff-plot`` (:mod:`experiments.reports.cli`: ``figure1``, ``figure2``,
``bounds``, ``peers``) and ``duff-audit`` (:mod:`experiments.audit.cli`);
the scripts in ``scripts/`` call them.

=====================  =====================================================================
module                 job
=====================  =====================================================================
``style``              name, colour, line and marker of a mechanism; saving a figure
``tables``             Markdown tables and number formats
``selection``          median rows, failed rows, the input error of a report
``figure1_data``       Figure 1's aggregates, ratios to Duff, the paper's quoted ratios
``figure1_plot``       Figure 1, with the theoretical bounds optionally
``figure1_report``     ``figure1_ratios.md``
``figure1``            ``duff-plot figure1``
``figure2_data``       the vertebral rows, their estimates and raw data
``figure2_numbers``    MAE per class, probability of the true order
``figure2_plot``       Figures 2 and 3
``figure2_report``     ``figure2_table.md``
``figure2``            ``duff-plot figure2``
``bounds_coverage``    ``duff-plot bounds``: coverage of the theoretical error bounds
``peers_table``        ``duff-plot peers``: a peers run's table
``audit_pairs``        neighbouring datasets and the partition of the privacy audit
``audit``              the privacy audit of one mechanism
``audit_report``       the audit's table, JSON and Markdown
``audit_cli``          ``duff-audit``
``tuning_study``       which tuning reproduces the paper's SmoothSens_ε,δ and LaplaceLN ratios
``reference_tables``   reading the committed reference outputs
``readme_values``      the README's measured numbers, from those outputs
``readme_numbers``     filling and checking the README's markers
``cli``                ``duff-plot``
=====================  =====================================================================
"""
