# cutune report: tuning curve of case 2. Render in this folder with `gnuplot case2_curve.gp` (writes case2_curve.png, case2_curve.svg).
set terminal pngcairo size 1000,650
set termoption noenhanced
set output 'case2_curve.png'
set title "case 2: tuning curve\ncase2_conv2d_N_1_H_68_W_68_CO_256_CI_128_KH_3_KW_3_strides_1_padding_1"
set grid
set key outside right top
set datafile missing '?'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set xlabel 'trial (log order)'
set ylabel 'GFLOP/s'
set yrange [0:*]
set xrange [0:999]
plot 'case2_curve.dat' using 1:2 with steps lw 2 title 'best so far', \
     '' using 1:3 with points pt 7 ps 0.5 title 'trial', \
     20915.231 with lines dt 2 lw 2 title 'cuDNN IMPLICIT_PRECOMP_GEMM'
set terminal svg size 1000,650 dynamic
set termoption noenhanced
set output 'case2_curve.svg'
replot
unset output
