# cutune report: tuning curve of case 1. Render in this folder with `gnuplot case1_curve.gp` (writes case1_curve.png, case1_curve.svg).
set terminal pngcairo size 1000,650
set termoption noenhanced
set output 'case1_curve.png'
set title "case 1: tuning curve\ncase1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1"
set grid
set key outside right top
set datafile missing '?'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set xlabel 'trial (log order)'
set ylabel 'GFLOP/s'
set yrange [0:*]
set xrange [0:999]
plot 'case1_curve.dat' using 1:2 with steps lw 2 title 'best so far', \
     '' using 1:3 with points pt 7 ps 0.5 title 'trial', \
     21018.389 with lines dt 2 lw 2 title 'cuDNN IMPLICIT_PRECOMP_GEMM'
set terminal svg size 1000,650 dynamic
set termoption noenhanced
set output 'case1_curve.svg'
replot
unset output
